"""agentwatch/sdk"""
