"""Conversations: each chat split into its threads (builds, the rules, the agent's answers)."""
