"""Command-line tools of pypto: `pypto-opt` (opt.py) and the source/diagnostic helpers it uses."""
