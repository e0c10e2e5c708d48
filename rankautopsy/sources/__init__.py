"""Sources: find the inputs (in folders and in tar or zip archives), read them robustly (gzip, UTF-16,
CRLF, ANSI, long lines, a file still being written), strip launcher prefixes, attribute each line to
the rank that emitted it, and turn every timestamp format into UTC (clocks). Owns the Stream of lines
the later stages read. May import the model and errors only.
"""
