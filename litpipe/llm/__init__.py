"""litpipe's model layer: structured calls through litellm, their cache, usage and errors.

`litpipe.llm.client` imports litellm (seconds): import it only where a model is configured.
"""
