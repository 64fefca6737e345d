"""Minimal ``transformers`` of the DGX Spark lab's stand-in images (not Hugging Face's library).

Only what clients of the serving containers use to count tokens: ``AutoTokenizer.from_pretrained(model)``
returning a tokenizer whose ``encode(text, add_special_tokens=False)`` gives one id per token as the
stand-in's generator counts them. See /opt/trtllm-standin/trtllm_standin/tokenizer.py.
"""

import sys

if "/opt/trtllm-standin" not in sys.path:
    sys.path.append("/opt/trtllm-standin")

from trtllm_standin.tokenizer import AutoTokenizer, StandinTokenizer  # noqa: E402

__version__ = "4.56.0+lab.standin"
PreTrainedTokenizerFast = StandinTokenizer
__all__ = ["AutoTokenizer", "PreTrainedTokenizerFast", "__version__"]
