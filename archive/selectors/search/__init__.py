"""Message search: the query language's parser and compiler, and the search selector."""
