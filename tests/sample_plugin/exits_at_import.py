"""A plugin module that parses the command line at import, as a script would: the
daemon's arguments are not its own, so argparse calls ``exit(2)``."""

import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--needed-by-the-plugin", required=True)
parser.parse_args()

PLUGIN = None
