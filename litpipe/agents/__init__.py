"""Agents: each is a prompt file, a reply schema and an offline engine, the engine's function
named from `litpipe.extractive` (which holds every agent's offline engine and imports no agent).

`base` says what an agent is and runs one, or many at once (offline, or through the LLM client);
`answering` holds what the answering agents share. A stage with one agent has one module named
as the stage (`paper_abstract`, `paper_questions`, `cross_paper_questions`, `synthesis` with its
flat writer `synthesis_flat`, its map and tree steps `paper_summary` and `cluster_summary` and
its refine step `refine_summary`, `plain_summary`, `related_work`,
`query_summary`), its prompt `litpipe/prompts/<stage>.md`; a stage with several has a package
named as the stage (`question_evidence`: the relevance and debate rerankers;
`relationship_analysis`: insights, relationships, follow-ups; `comparison_table`: the
aspects, then each paper's cells), its prompts in `litpipe/prompts/<stage>/`. `answers` and
`massrag` (the multi-view answer's three views and their reconciler) write `paper_answers`;
`search_queries` and `related_work_plan` (LitLLM's queries and sentence plan) serve
`related_work`, with the `debate` of `question_evidence`.
"""
