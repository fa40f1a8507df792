"""The baseline models and the component tables (components.py); importing the package imports
the registered components (the plain classes and their fused subclasses, fused.py), so the tables
are full before a model is built."""
from onmt.models import fused, rnn_decoder, rnn_encoder  # noqa: F401 (they register into components)
