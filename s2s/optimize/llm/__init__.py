"""The LLM proposer's parts: configuration and client, prompts, and turning answers into candidates."""
