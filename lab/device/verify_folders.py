"""`labctl.py verify CANDIDATE --reference REFERENCE`: the MLX guide's checks 1 to 3 on a learner's own
MLX model folders, run by mlx-lm itself, offline and without running any code from the folders.

    python3 labctl.py verify mlx_model --reference gemma-bf16 [--prompt TEXT ...] [--tokens N] [--chunk N]

Check 1 answers each prompt greedily with both models and compares token ids; check 2 compares the
logits of one prompt at every position; check 3 prefills a long text in one pass and in chunks on
the candidate. Each folder is checked by lab.device.mlx_folder first (no model_file, no auto_map, a
model mlx-lm ships) and loaded with trust_remote_code off. The exit status is 0 when every check
reads as healthy, 1 when one reads as the guide's red flag or corruption, and 2 for a folder or
argument the lab refuses, with its reason in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lab.device import mlx_folder, verify
from lab.errors import LabError
from lab.study.chat_study import first_divergence
from lab.text import quoted

#: the guide's prompts for check 1 (§10.1) and check 2 (§10.2)
GUIDE_PROMPTS = (
    "Write a Python function that reverses a linked list.",
    "Explain, in three sentences, why the sky is blue.",
    "List the first ten prime numbers as a JSON array.",
    "Translate to French: The quick brown fox jumps over the lazy dog.",
)
LOGIT_PROMPT = "The capital of France is Paris, and the capital of Germany is"
PREFILL_TEXT = "The history of computing begins with the abacus. "


def _ids(tokenizer, prompt: str) -> list[int]:
    """The guide's tokenization for check 1: the chat template where the tokenizer has one."""
    if getattr(tokenizer, "chat_template", None):
        return list(tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True))
    return list(tokenizer.encode(prompt))


def run(
    candidate: str, reference: str, prompts: list[str], tokens: int, chunk: int, prefill_tokens: int, out=sys.stdout
) -> int:
    """Print the three checks' report; return the exit status."""
    reference_model, reference_tokenizer = mlx_folder.load_folder(reference)
    same = Path(candidate).resolve() == Path(reference).resolve()  # a folder against itself loads once
    candidate_model, candidate_tokenizer = (
        (reference_model, reference_tokenizer) if same else mlx_folder.load_folder(candidate)
    )
    if reference_tokenizer.vocab_size != candidate_tokenizer.vocab_size:
        raise verify.VerifyError("the two folders' tokenizers differ in size, so their token ids cannot be compared")
    alarms = 0
    print(f"check 1: greedy token ids, {tokens} per prompt", file=out)
    for prompt in prompts:
        ids = _ids(reference_tokenizer, prompt)
        expected = verify.greedy_run(reference_model, ids, tokens)
        got = verify.greedy_run(candidate_model, ids, tokens)
        index = first_divergence(expected, got)
        alarms += index is not None and index < verify.RED_FLAG_BEFORE
        print(f"  {quoted(prompt[:50])}: {verify.divergence_reading(index, tokens)}", file=out)
    logits = verify.compare_logits(reference_model, candidate_model, list(reference_tokenizer.encode(LOGIT_PROMPT)))
    alarms += logits.max_difference >= verify.CORRUPTION_BAND[0]
    print(
        f"check 2: logits at {logits.positions} positions: max |difference| {logits.max_difference:.4f}, "
        f"mean {logits.mean_difference:.5f}, argmax agrees at {logits.argmax_agreement}/{logits.positions}; "
        f"{logits.band}",
        file=out,
    )
    long_ids = list(candidate_tokenizer.encode(PREFILL_TEXT * (prefill_tokens // 8 + 1)))[:prefill_tokens]
    prefill = verify.compare_prefill(candidate_model, long_ids, chunk)
    alarms += prefill.argmax_one_shot != prefill.argmax_chunked
    print(
        f"check 3: {prefill.tokens} tokens, one pass against chunks of {prefill.chunk}: "
        f"max |difference| {prefill.max_difference:.4f}, argmax {prefill.argmax_one_shot} and {prefill.argmax_chunked}"
        + (
            " (they disagree: the row-count bug's signature)"
            if prefill.argmax_one_shot != prefill.argmax_chunked
            else ""
        ),
        file=out,
    )
    return 1 if alarms else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="labctl.py verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("candidate", help="the quantized MLX model folder")
    parser.add_argument("--reference", required=True, help="the unquantized MLX model folder")
    parser.add_argument("--prompt", action="append", help="a prompt for check 1 (repeatable; default the guide's four)")
    parser.add_argument("--tokens", type=int, default=32, help="greedy tokens per prompt (default 32)")
    parser.add_argument("--chunk", type=int, default=128, help="check 3's chunk, in tokens (default 128)")
    parser.add_argument("--prefill-tokens", type=int, default=512, help="check 3's prompt, in tokens (default 512)")
    arguments = parser.parse_args(argv)
    if (
        not 1 <= arguments.tokens <= 4096
        or not 1 <= arguments.chunk <= 65536
        or not 2 <= arguments.prefill_tokens <= 65536
    ):
        parser.exit(
            2, "labctl.py verify: --tokens must be 1 to 4096, --chunk 1 to 65536 and --prefill-tokens 2 to 65536\n"
        )
    try:
        return run(
            arguments.candidate,
            arguments.reference,
            arguments.prompt or list(GUIDE_PROMPTS),
            arguments.tokens,
            arguments.chunk,
            arguments.prefill_tokens,
        )
    except LabError as error:
        print(f"labctl.py verify: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
