"""Where things are: the repository, and the shared data that some tests read when it is there."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the checkout
# ../shared/data beside the checkout (Gigaword, CNN/DM); a fresh clone has none: tests skip with a reason
SHARED_DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")
