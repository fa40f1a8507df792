"""The paper's model; importing the package registers its decoder and the decoder's fused subclass
(onmt/models/components.py)."""
from onmt.reinforced import decoder, fused  # noqa: F401 (they register "reinforced" into components)
