"""Capacity planning from demand: read demand (declared, trace, Prometheus), size tiers, report, chart, stack file."""
