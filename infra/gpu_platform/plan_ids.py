"""The ids the offline engine gives resources, so plan readers can follow one resource's id to another.

The engine's mock (`engine.run_program`'s Recorder.new_resource) answers every registration with the
id `<logical name>-id`; a RouteTableAssociation's `routeTableId` or a rule's `securityGroupId` in the
plan is therefore the id of the resource with that logical name.
"""

from __future__ import annotations


def planned_id(logical_name: str) -> str:
    """The id the offline engine gives the resource with this logical name."""
    return f"{logical_name}-id"
