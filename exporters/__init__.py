"""exporters"""
