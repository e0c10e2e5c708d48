"""Sources: find inputs, read them robustly, attribute each line to a rank."""
