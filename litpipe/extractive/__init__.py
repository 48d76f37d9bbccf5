"""litpipe's offline extractive engine: every agent's reply written from the inputs' own text,
deterministically, with no model. It imports nothing of `litpipe.agents`: an agent names its
engine function here, and the engine can be used, tested and read on its own."""
