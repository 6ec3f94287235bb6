"""Live sync's use cases: `accounts` (connecting an account, its schedule), `run` (one run
of an account, and the daily repair pass), `login` (connecting step by step), `sending`
(the send port's senders)."""
