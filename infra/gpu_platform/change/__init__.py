"""The change a revision makes: plan the base revision and the working tree offline, and diff them per resource."""
