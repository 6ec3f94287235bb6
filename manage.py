#!/usr/bin/env python
"""Django's command-line utility; `wirecat` is the same entry point installed as a script."""

from wirecat.__main__ import main

if __name__ == "__main__":
    main()
