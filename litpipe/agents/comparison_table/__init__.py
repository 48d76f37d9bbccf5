"""The agents of `comparison_table`: `comparison_aspects` (the table's columns, from the
collection's papers) and `comparison_cells` (one paper's row, from its own passages). Their
prompts are `litpipe/prompts/comparison_table/<agent>.md`, their offline engine
`litpipe.extractive.comparison_table`."""
