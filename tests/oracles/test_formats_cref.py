"""The ggml block quantizers against ggml's own C code: bytes it wrote, pinned here as hex.

The lab reimplements ggml's reference quantizers in numpy. These constants are what the C
functions themselves wrote for one input, so CI checks the lab against the reference without a
C compiler; no ggml code is in this repository.

How the bytes were made, so anyone can make them again:
  source     src/ggml-quants.c of ggml-org/ggml at commit d99724f2b141fed9e1a9f402213506c081433465,
             unmodified, with the headers it includes from the same commit (ggml-common.h,
             ggml-quants.h, ggml-impl.h, ggml.h, ggml-cpu/ggml-cpu-impl.h, ggml-cpu.h, gguf.h,
             ggml-backend.h, ggml-alloc.h), and a stub file for the four ggml symbols it links
             against and these functions never reach (ggml_abort, ggml_row_size, ggml_type_name,
             ggml_type_size).
  compiler   gcc 12.2.0 (Debian 12.2.0-14+deb12u1) on x86-64, -O0 -ffp-contract=off -fno-fast-math
             (plain IEEE float32, no fused multiply-add, as numpy computes); -O2 -ffp-contract=off
             writes the same bytes. float16 conversions are ggml's own GGML_FP32_TO_FP16.
  functions  quantize_row_q4_0_ref, quantize_row_q4_1_ref, quantize_row_q8_0_ref,
             quantize_row_q4_K_ref, quantize_row_q6_K_ref, quantize_row_iq4_xs_ref, and for IQ4_NL
             quantize_iq4_nl(src, dst, 1, 1024, NULL): what ggml_quantize_chunk writes into a GGUF
             file without an importance matrix. (quantize_row_iq4_nl_ref is a different search
             since ggml f5fc72a1, March 2024: one grid, ntry = -1, and it is not what GGUF files hold.)
  input      reference_input() below: 1024 float32 weights from a seeded numpy Generator, passed
             as one row (k = 1024) from a float32 file; each function's output bytes written in
             hex, 96 characters a line.
The same build agreed with the lab on every block of 60,000 random super-blocks per format
(normal, heavy-tailed, one-signed, constant, zero, sparse and tied blocks at scales from 1e-8
to 1e4; 480,000 blocks for the 32-weight formats). The input plants the cases where the lab had
differed before it was fixed: a Q8_0 fraction a float32 ulp below one half, a group of signed
zeros (Q4_0's d is then -0), a zero minimum met as +0 before -0 (Q4_1's m), and IQ4's candidate
grids t - 127 below -128, which numpy had wrapped in int8 (a fifth of IQ4_NL blocks).
"""

from __future__ import annotations

import numpy as np
import pytest

from lab.formats import FORMATS, iq4_nl, iq4_xs, q4_0, q4_1, q6_k, q8_0

BLOCK_BYTES = {
    "q4_0": q4_0.BLOCK_BYTES,
    "q4_1": q4_1.BLOCK_BYTES,
    "q8_0": q8_0.BLOCK_BYTES,
    "q4k": 144,
    "q6_k": q6_k.BLOCK_BYTES,
    "iq4_nl": iq4_nl.BLOCK_BYTES,
    "iq4_xs": iq4_xs.BLOCK_BYTES,
}


def reference_input() -> np.ndarray:
    """Four super-blocks of 256 float32 weights, as the C functions read them (one row of 1024)."""
    rng = np.random.default_rng(20250821)
    w = rng.normal(0, 1, (4, 256))
    # super-block 0: N(0, 0.02); its first 32 are integers under a largest 127, so Q8_0's d is 1
    # and 0.49999997 (a float32 ulp below one half) must round to 0, as C's roundf does
    w[0] *= 0.02
    w[0, :32] = rng.integers(-126, 127, 32)
    w[0, :3] = [127, 0.49999997, -0.49999997]
    # super-block 1: t(3) tails at 1e-3; a group of signed zeros, -0 first; a one-signed sparse group
    # whose minimum is zero, met first as +0 and later as -0 (C keeps the first for Q4_1's m)
    w[1] = rng.standard_t(3, 256) * 1e-3
    w[1, :32] = np.where(np.arange(32) % 3 == 0, -0.0, 0.0)
    w[1, 32:64] = np.abs(w[1, 32:64]) * (rng.random(32) < 0.4)
    w[1, 32:64][w[1, 32:64] == 0] = 0.0
    w[1, 32 + 5] = -0.0
    # super-block 2: every 16 at its own scale, 1e-3 to 1e3; a constant 16; +a and -a both largest
    w[2] = rng.normal(0, 1, 256) * np.repeat(10.0 ** rng.uniform(-3, 3, 16), 16)
    w[2, 64:80] = 0.7
    w[2, 160:176] = rng.normal(0, 0.3, 16)
    w[2, 163], w[2, 170] = -2.5, 2.5
    # super-block 3: half-integers (ties for the 4-bit grids), one group near 1e-9, one all negative
    w[3] = rng.integers(-16, 17, 256) / 2
    w[3, 0] = -8
    w[3, 128:160] *= 1e-9
    w[3, 192:224] = -np.abs(rng.standard_t(4, 32))
    return w.astype(np.float32).ravel()


#: the C reference's bytes for reference_input(), per lab format (see the module docstring)
REFERENCE_HEX = {
    "q4_0": (  # quantize_row_q4_0_ref, 576 bytes
        "f0cb9018183a3c7a84a583cbf487ccbe7f460b1cc5bbe013e86733216d9ac89c841069e7349e968c6c54478c974ab7b3"
        "9876950a64b8b09c5e4971a576663079b9b78b752aca3865ea1c99ab80dbb2fdb1eb5987583eb894b6904b9e95abb876"
        "bdc487a6ba9746408dcc7da6f89d7355749789476a9847ea759d685d7025691d15c3b87c64428055a48b4949878b55aa"
        "008088888888888888888888888888888888b69068078688888888856868782788888888608d33669949930f88c75699"
        "88ea48554976a8149978089888899889888987776798888aa412998c878778a68789788a8a8979809d983b8d48c6775b"
        "079c9b8a4a0a259cc99f6c88231688889807868a868898c78888899988880a9469778808989a6968a88987978a7b6a8a"
        "93ae97678b70598a68668888a68679897778139d18b8b79937b76858b7498847887849083ad56838c8a8a828b8c88888"
        "6888d808989847d13858a8f8e8780878b8c898688858f858b3578c88898d80848289818186898d87868c003588868880"
        "8a88878888898f878787888823578808282808b8489878d82828b87818c86ec3f808788818187878c8786828a8f898d9"
        "003c80263e57cf1a64db2979614b6e7a3119003cd6f8162ead8ef1e80462aab301a5855f003cea3c96af309f79db9094"
        "ffaf6fff4a9b00bbd38667fd03072b51eb9dfdefb25ddd320080ee459049da562d98c6db5371ff0d77a6003cb2bc41cc"
        "1a598b7fe83f285c7f26c0831f3807887757687777776876678768578576003c7c9caffb7a4ef0d44dbdf8948c9745cc"
    ),
    "q4_1": (  # quantize_row_q4_1_ref, 640 bytes
        "0d4c40d76ff7e7d5c4857b5a7c340b78444280b98d1b0ba8d5bcf113f96833217eaad9ac84106af8e71cf8a547507099"
        "965037a2161c456748f28a15571ce4a690b58e4a7898cf863537637ad424c799261deaa899aa80cab2fda1da5877573e"
        "b894a680511d5aa75a321678201b57382357b8af60117037751d43a87caa7b5865b89557b7048a5186907fd9621c69a9"
        "16f4e98f7552a076c5ad5b5ba9ad66cc0000008000000000000000000000000000000000060d000040f3051000000005"
        "403020b1000001003a0d6d98cc9966b65bf07638a9657714b79ab588ff11a8a0ffcd0cecdcdeeddecdcddbbbacfddcdf"
        "8a11a49ebb9ea9998ac8999a899cac9b9ba0afaa140d4a98b73887a3f7635475b5f5da6336609377011523a2aaa9ba09"
        "97aca8aab9f9aaaaabbbaaaac5117a99625643f3343173641433453542506141ee2c55b53676405f8341748654442747"
        "63535664a31b2ca4e5140634c615748405934595555493f4825471de86c6163636d626165666766606f656469c513ddd"
        "c7a767172787f797573777a787a707a7bb56b3e39e999b9f9094929a9191979a9f98979e553500c17776888089788778"
        "77787f87777787775f5623e39909392809c949b989f92929c98919e97f43a0ce07f78777e7e78787378797d757076726"
        "003c00c880263e57cf1a64db2979614b6e7a3119223c00c8d5f8051d9d7df1e8046299b30095844f443c00c8d92b869f"
        "308f68ca8083fe9f6fff498a773b00c73c8aa813fcf9d4be246303214da333cd0000008011ba6fc735b9e3674a34ac9e"
        "00f2895a223c00c8a2ac30bb1a597b7fe72f285c7e16b08260341fc40dfedeaebecdeeddcfdccefecfadfadb223c00c8"
        "6b9c9ffb7a4ef0d34dbdf8937c9735cb"
    ),
    "q8_0": (  # quantize_row_q8_0_ref, 1088 bytes
        "003c7f0000dec7db442d50d43c0fc7a58c1df4776c57480b02e3fec28dfac5d0133d130ccd3688b4fff3a99251190639"
        "bf810ff143295c8f5adcb29ce7163f11fa8cdf5f400e1cc7c3390bc415df1154031d2be14103f4021e2f38fee942d1ce"
        "f00def7f26cfba0ca3ea7335181a7ff4f30ace33e0da072e284314de0a204d11ced3000f5bc35125f40c162c812d9f54"
        "982a0bf8fc6506c4e0831722044a347a285fd3fcd1b43416290b570e37d50124b6461524dd111e7fb7c8b818f3e4c910"
        "d3bdf9dfcaf6434206c513e3040e50324113f513e70409da35b501ab7f2f0f2f10effb4125ea44a514ea1a2e0e63740d"
        "d3b5fb42c49981cdc72b110fef2ad3208f3d35eddfc1fed71a00c2c70701d22100000000000000000000000000000000"
        "000000000000000000000000000000000000600200172700000000290000000800020702247f00070000000021180f5b"
        "000000005b015424f2f34897fb131eea04daff34eb1b4b26ef3eeb7f04c12ef004a63a293c12b204170300f8000c0413"
        "010af3eef707fd1a18f8810d05021403fefb01f0e816060159030f40f8f704e6f40afa1c1d0f138148030ffd01feee20"
        "fdf8eef904faf802090b510107190bcb0ac1d0e0e5e62fbff898bf0046c415347ff1e9fe3f7865f1c2f32406300608fa"
        "04f0e019e402f9f50601110e05fe00000981fb03020110430305030bfffd1204ea17fafc00e0f4fd07f70811e7d5dde5"
        "1c0e017ff7f32718defcfdf4fd0d1b01a01e1517cc7ff2da0018fcfb2020ebf513fdf422000b28001c2703fee5011606"
        "0b141d0d040114f80e0bfffc0df3040d03fff0ff6fd2cdf557d32531cc38003c070d3c7f454500000000000000000000"
        "0000000000001f54c0dcde5ecabdf9071802b27ff2ef5141000000000000000000000000000000004d2ee596a40e7f18"
        "d3baf627072d822ec34743fd135181b9a30f8c93dc1250f1dc47000000000000000000000000000000000a2500e40781"
        "1d03f404f90d7ff6f0f1fbfe00000000000000000000ff0000ff010031470704fcf9fa0103fd05010500fcff0303ff84"
        "a79c812cbc17ec569b9929f08c437d3304fc0605fafeff04fcfb020501fdfff38f7f0b06686d0814c3131959de91f1ab"
        "082c81d85ff06f18c030100891285718890800a1a9c83889e04799e8d8b9e0f0b191082cd800d8574f579100c0a118b1"
        "89d0c86f4f77899918f8775f81e01830811800c8082c1838e0778177083081b967777f7720305fa90818b110e84f0808"
        "7720e07fc0080e2b522409ae5212ca6dcaaeb78a64b7ae5bae00248a7f7f6436a5ee81a5ca2dae520000a1307ff8e020"
        "b90028d04f6f91b11828a140f047b93867f0c8b93018897f10e0082ca14089382010306ff877004067e081a92828b938"
        "91d0f8f05fa9a1d0f09938002728ecfbf4f5fbf1f6f0fce6f7f7fcebd2dd81ffedd7e0e9f3f0e8ede6ffe5d5fdf3082c"
        "38407730205f81b94f4f00b940f0d038e810186ff0c06f4fc0306f10f810b940"
    ),
    "q4k": (  # quantize_row_q4_K_ref, 576 bytes
        "e333f43e3f0000003f000000000000005fc7174593853b1aeca49bc84301a089d6bffe1dfc68372577a3d0a7831468fb"
        "0750e0a98680f662667b35a748427aa594b587487994c38a31316376d32fc891a92a608a02bd718a387787fe08140670"
        "493a187c2b0f5a3d1557b5b36b197a386b499af75527046656d3b9b186d06ec917e9e785755aa874caa05754a8a967cc"
        "4301370a8050d0a58000cc3022b1fff50030500000000050000000100000100040f0001000000000403020b000000000"
        "fddad6c6dce0d7f9d9e6b8b5c7dbd6f9fcca06ecd6dff8d3dac6d8b1abfadbd97b8f79397a38394b595c9c2b6b002f6a"
        "bb3a8aaae85c5a69a8e9da59396a9b7b2a694a49471c384a59395a6a2b0b1a2a6a5a4bf0393a7a6a1b4f4a3a4a5b6a4a"
        "d23eac4bc000ea1ac000db15ff00cb224646604f535144465434475742433644d3170435b814778804944294565595e6"
        "76767676767676767676767676767676c8ac6113238df291553678a680af05a57e597a0f9074627a7181e66a6f68767e"
        "797979797979797979797979797979799a999999999999999a999a999999998919f0a392f0fca4ab58afb2f27c18813e"
        "75241c3039fa3ffa3cfdbff800d90fc950855ed7dfd9148b4928913a0d5940f8d8f202149b70f6ec016695b306978341"
        "c99b863ec08e48da40333d1edf3e39ca3d729819e3e8d6ac28680e2946af34c821ca0fb7a599b3f77af48ccee062092a"
        "a1ab36bc135b7e76e4232a59701fb885bdcffebeafee0e3edfdc8f3fcf7d5abb609f9dfb7c4dfede4dbdfd9f7c9a3fce"
    ),
    "q6_k": (  # quantize_row_q6_K_ref, 840 bytes
        "605070b9ce698fc5ac1bf15c0eb78df933f194492d1d6f08b1c04ed24f1d7bc0735e423da0ad1a3434e6c14e8090e45c"
        "228b99c2c8565ba5290601b50e61473ac54b01bb38b566fae3ae3f3901510841ba17bf5d23b14678abd1ac73831bb60d"
        "52ebf007137e1b3729bc4840c2ae528a0a13f6b77be1fd41770bef0f23053993d4ba32425a7610a19c4a995996a34b55"
        "6e185c905c652152e6ebaf5a26c2156d461a58d66c1324565aa595b36eb94d9415d591686100556482b61e6f99915985"
        "80850000000000000000000000000000f827a0b0c0c06000f060909010400000a080e07040105010f0f05040f0602060"
        "10c040de01a00020b090e040006ac08f3a0f67e1103e1000501008fa0ccaa050100084a05e0e01a94d239f47671415f0"
        "52e101032f01f211130742171c16183e08f5f228c3d0038c71e658986fdcdd006cc09edf0b03203466a09011163410d3"
        "970f38609098b84858206858e8d4a874942484502894a88898a894649470589898982adb69558a3145669556aaa23620"
        "231a616aa50693a86a6aa7b2a1aaae69659500001033e91d149cbb12ea1be080e45431800b0a0d00040a000a01010808"
        "05030b018ab500979180ea112ee2a50f4f0b3840fa6f109d199e71679cf54a7b1bb219a2d45c7da36adb17a4bd123061"
        "ee5df150d12ff514805ee934736577f5e4bcb7c20711a07c08b4f261bc547067aac63a1d907902d127a1ed917e436fdd"
        "2c8ccf0fba14d1ff7466e6b3f5bfa6b28cb0495ec585828802420a89024e8541864acd0a1248bae9e04a2474a9d69b65"
        "7445e561bb75ca834868649a7468bd9687556527e606484809254e669577410fa6d18ef4000000000056002d80000000"
        "f9890004c2b360e688dc1cd620cc14f294daf6d682c28067e9a14fc168c3e5ea268d880c0be366a026a7655713e01fa7"
        "c60bb1c4a19d440e72d6161e8e386048f66cd05640c228c47082c8589250d6ecaca4dc140a860800b46e82a2d6c4aeb2"
        "a40a9e50fcd8e800e2ce88840cec4e4e00e00ac840ea7bcb9c1041231eac2b3715c32cc340e0e4a9973dcfbe61ea4202"
        "3832f33624eecebc50d13a142d4fd095c9d8a149f81493ddd09a9ad91b1ed5ce981cdf5741818b69521c93d51416de53"
        "11659750dd1a84898984807c9c7000008491e9c084702398"
    ),
    "iq4_nl": (  # quantize_iq4_nl, 576 bytes
        "01bc9008182b3c7b83a482dbf387ccce6f35e20bd4bce002e85722116eaad89c730059e7388e968c5d43478ca63bc6c2"
        "9875940a53c8ee8c5e3a61b476563069c9b78c742acb2754050daabb80dbc1feb1eb4987482ec8a3b590798e94abc875"
        "bdd386b5cb9635307dcc6da6f88d7244639689365aa837eb64ad684e7014300d04d2c76d53318044a38b3939968b44bb"
        "0000888888888888888888888888888888886a8258068578888888855868782788888788528122559939a30f88d6459a"
        "88eb38443a6646856698f8797887688688878999a96778865703998d878768b68779677a8a7979809d98458137d6674c"
        "079dac8b3a0a149dd99f5d782c0689879806758a868897d788888999888813846a768808989b5968b78987968a7b6b8a"
        "a19e96568c70598b68568888a5856a7976683a8d18b8c69927b75848c74988377878390819c55828d8b8b818c8d89878"
        "6888e80898989541d8b868182898f8a8483878b898b808b81c488d88898d80838289818185898d87858d512588868880"
        "8a88878887898f878787878802478908281707b838a868e81818b87808d88bb3f808777718187868c8686827b8f898e9"
        "ff2b80152e46cf0a53dc1969513b5e6a2019fd2be5f8051eae7ef1e80351aac200a4844f442cea2c95af209f69db9093"
        "feaf5fff3a9b24abe28557fe02061c41ec9efdefc14dee220080ee349039da451d98c5dc4261ff0d76a5fb2bb1bd30cc"
        "1b497c6fe72f184d6f15c082262806876757576777766866678768468475012c6c9daffc7b3ef0e33ecef8937d9734dc"
    ),
    "iq4_xs": (  # quantize_row_iq4_xs_ref, 544 bytes
        "0128a8aa000000009008182b3c7b83a482dbf387ccce6f35888888888888888888888888888888888888888888888888"
        "888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888"
        "888888888888888888888888888888888888888888888888888888888888888888888888888888883180eac8d0b77f50"
        "888888888888888888888888888888885806857888888885586878278888878822559939a30f88d6459a88eb38543a66"
        "6698f8797887688688878999a9677886998d878768b68779677a8a7979809d9837c6674c079dac8b3a0a149dc99f5d78"
        "89879806758a868897d78888899988885a768808989b5968b78987968a7b6b8a1cb47a88005400158888888888888888"
        "8888888888888888888888888888888888888888888888885828d8b8b818c8d898786888e8089898d8b868182898f8a8"
        "583878b888b808b88d88898d80838289818185898d87858d888888888888888888888888888888888908281707b838a8"
        "68e81818b76808d8f808777718187868c8686827a8e898d94498c01222b0202080152e47cf0a53dc1969513b5e7a2019"
        "e5f8051eae7ef1e80351aac200a4844fea2c95af209f69db9093feaf5fff3a9be28557fe02061c41ec9efdefc14dee22"
        "88888888888888888888888888888888b1bd30cc1b497c7fe72f184d7f15c08206876757576777776866678768468475"
        "6c9daffc7b3ef0e33ecef8937d9734dc"
    ),
}


def test_the_input_holds_the_planted_cases():
    w = reference_input()
    assert w[1] == np.float32(0.5) - np.float32(2**-25)  # one float32 ulp below a half
    assert np.signbit(w[256]) and not w[256 : 256 + 32].any()  # signed zeros, -0 first
    assert np.abs(w[:32]).max() == 127  # Q8_0's d = 127 / 127 = 1 exactly
    sparse = w[256 + 32 : 256 + 64]
    zeros = np.signbit(sparse[sparse == 0])
    assert sparse.min() == 0 and not zeros[0] and zeros.any()  # +0 first, a -0 later


@pytest.mark.parametrize("name", list(REFERENCE_HEX))
def test_the_quantizer_writes_the_bytes_ggml_s_c_reference_writes(name):
    expected = np.frombuffer(bytes.fromhex("".join(REFERENCE_HEX[name])), dtype=np.uint8)
    ours = np.asarray(FORMATS[name].to_gguf(reference_input()), dtype=np.uint8)
    assert ours.shape == expected.shape == (1024 // FORMATS[name].block_size * BLOCK_BYTES[name],)
    differing = np.nonzero(ours != expected)[0]
    assert differing.size == 0, (
        f"{name}: {differing.size} bytes differ, first at byte {differing[0]} "
        f"(block {differing[0] // BLOCK_BYTES[name]}, byte {differing[0] % BLOCK_BYTES[name]} in it)"
    )
