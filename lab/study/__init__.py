"""What a format does to a real model: all-MiniLM-L6-v2 as numpy (model), its safetensors weights
through every format (real_weights), the retrieval task (retrieval_data) and what quantizing does
to its answers (behaviour), the error measures (metrics), the one accounting of bits per weight
under a named scale dtype (accounting), the side-by-side table (compare), the checked on-disk
result cache (cache), learned quantization of one Linear, GPTQ and AWQ (learned), llama.cpp's
and mlx-lm's recipes tensor by tensor (recipes), the chat model in numpy (chat) and what every
format does to its answers (chat_study), its KV cache quantized (kv_study), and the calibration and
evaluation texts (calibration) and llama.cpp's importance matrix (imatrix) the learned methods use.

May import: lab.codes, lab.formats, lab.interop and lab's root modules.
"""
