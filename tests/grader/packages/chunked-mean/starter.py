def accumulate(x, chunks):
    pass
