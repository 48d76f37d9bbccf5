"""The bodies of the `litpipe` commands, one module per command or family (`run`, `backfill`,
`status`, `ui`, `config` and `init`, `ask`, `related-work`, every `eval`), and what they show
on the terminal. `litpipe.cli` parses the command line and calls them; what runs the graph
in-process lies below, in `litpipe.runtime`. Each module imports Dagster, LanceDB and the
tokenizer only inside its functions: `litpipe --help` must not pay for them."""
