//! The agent-to-collector protocol (in progress).
