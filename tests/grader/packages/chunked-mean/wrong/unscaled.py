def accumulate(x, chunks):
    for part in x.chunk(chunks):
        (part**2).mean().backward()
