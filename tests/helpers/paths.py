"""Where things are: the repository, and the shared data that some tests read when it is there."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the checkout
# ../shared/data beside the checkout (Gigaword, CNN/DM); a fresh clone has none: tests skip with a reason
SHARED_DATA = os.path.join(os.path.dirname(ROOT), "shared", "data")


def load_module(relative_path, name):
    """The Python file at `relative_path` in the checkout (a script of tools/ or bench/, not a package
    module) executed as a fresh module called `name`."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relative_path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
