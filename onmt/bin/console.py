"""The console scripts (pyproject.toml [project.scripts]): each command is imported inside
`launch` (onmt/utils/cli.py), as the .py scripts at the root import theirs, so that ^C, SIGTERM or
SIGHUP during the imports (torch's take seconds) is one line and exit 130, 143 or 129. Pointed at
the commands' own modules, the scripts imported torch before any handler was in place: ^C in their
first seconds was a KeyboardInterrupt traceback. This module imports nothing heavy."""
from onmt.utils.cli import launch

COMMANDS = {"onmt_preprocess": "onmt.bin.preprocess", "onmt_train": "onmt.bin.train",
            "onmt_translate": "onmt.bin.translate", "onmt_evaluate": "onmt.bin.evaluate",
            "onmt_tune_decoding": "onmt.bin.tune_decoding", "onmt_explore": "onmt.bin.explore",
            "onmt_build_vocab": "onmt.bin.build_vocab", "onmt_server": "onmt.bin.server",
            "onmt_average_models": "onmt.bin.average_models",
            "onmt_release_model": "onmt.bin.release_model",
            "onmt_prepare_cnndm": "onmt.prepare.cnndm",
            "onmt_prepare_gigaword": "onmt.prepare.gigaword"}


def preprocess():
    launch(COMMANDS["onmt_preprocess"])


def train():
    launch(COMMANDS["onmt_train"])


def translate():
    launch(COMMANDS["onmt_translate"])


def evaluate():
    launch(COMMANDS["onmt_evaluate"])


def tune_decoding():
    launch(COMMANDS["onmt_tune_decoding"])


def explore():
    launch(COMMANDS["onmt_explore"])


def build_vocab():
    launch(COMMANDS["onmt_build_vocab"])


def prepare_cnndm():
    launch(COMMANDS["onmt_prepare_cnndm"])


def prepare_gigaword():
    launch(COMMANDS["onmt_prepare_gigaword"])


def server():
    launch(COMMANDS["onmt_server"])


def average_models():
    launch(COMMANDS["onmt_average_models"])


def release_model():
    launch(COMMANDS["onmt_release_model"])
