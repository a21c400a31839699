"""Tools the LLM can call: the contract, the orchestrator, approvals, and the catalog."""
