//! Wire protocol between redctx clients and the daemon.
