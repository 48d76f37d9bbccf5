"""Plain functions composing agents and retrieval into the methods litpipe implements; the Dagster
assets in `litpipe/defs/` wrap them, and a notebook can call them without Dagster."""
