"""The agents of `relationship_analysis`: `insights` (one per question-and-answer pair),
`relationships` (typed relationships, theme and narrative) and `followups` (questions for papers
the analysis left thin). Their prompts are `litpipe/prompts/relationship_analysis/<agent>.md`."""
