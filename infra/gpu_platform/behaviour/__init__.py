"""Upstream behaviour reproduced as product code: one module per component, each function citing its source."""
