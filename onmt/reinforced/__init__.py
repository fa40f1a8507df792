"""The paper's model; importing the package registers its decoder (onmt/models/components.py)."""
from onmt.reinforced import decoder  # noqa: F401 (registers "reinforced" into components)
