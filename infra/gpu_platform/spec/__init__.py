"""The typed platform spec: stack config parsed once into frozen models (see loader and models)."""
