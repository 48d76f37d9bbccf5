"""Agents: each is a prompt file (litpipe/prompts/<name>.md), a reply schema and an offline engine.

`base` says what an agent is and runs one (offline, or through the LLM client); `extractive`
holds the offline engine's text utilities; one module per agent (`questions`, `abstract`,
`relevance`, `debate`); `rerankers` makes rerankers of the relevance and debate agents.
"""
