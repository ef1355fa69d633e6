"""The rules, one module per concern; importing the package registers them all."""
