"""Attention (``lens.nn.attention``, like ``flax.linen.attention``)."""

from lens.nn._attention import MultiHeadAttention as MultiHeadAttention
from lens.nn._attention import (
    MultiHeadDotProductAttention as MultiHeadDotProductAttention,
)
from lens.nn._attention import SelfAttention as SelfAttention
from lens.nn._attention import combine_masks as combine_masks
from lens.nn._attention import dot_product_attention as dot_product_attention
from lens.nn._attention import (
    dot_product_attention_weights as dot_product_attention_weights,
)
from lens.nn._attention import make_attention_mask as make_attention_mask
from lens.nn._attention import make_causal_mask as make_causal_mask
