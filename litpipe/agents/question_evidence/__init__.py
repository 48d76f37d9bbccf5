"""The agents of `question_evidence`: the rerankers that are agents (`relevance`, `debate`), the
passage prompt they share (`passages`) and the choice of a reranker (`rerankers`). Their prompts
are `litpipe/prompts/question_evidence/<agent>.md`."""
