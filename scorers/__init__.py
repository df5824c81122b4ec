"""scorers"""
