"""`python -m toolrl_pyhost`: serve the JSON-lines protocol until stdin closes."""

import sys

from .server import main

sys.exit(main(sys.argv[1:]))
