"""Pure statistics for Concord: numpy/scipy/pandas over plain data, no Django."""
