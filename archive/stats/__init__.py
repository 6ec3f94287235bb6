"""Statistics: messages over time, the hour-of-week heatmap, top chats and people,
unanswered messages and response times."""
