"""Agents: each is a prompt file (litpipe/prompts/<name>.md), a reply schema and an offline engine.

`base` says what an agent is and runs one, or many at once (offline, or through the LLM client);
`extractive` holds the offline engine's text utilities; one module per agent: `questions`,
`abstract`, `relevance`, `debate`, `answers`, `massrag` (the multi-view answer's three views
and their reconciler), `cross_questions`, `insights`, `relationships`, `followups`,
`synthesis` (with `paper_summary` and `cluster_summary`, its map and tree steps) and `plain`;
`rerankers` makes rerankers of the relevance and debate agents.
"""
