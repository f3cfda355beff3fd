import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-3.0 - 2.0)
        t1 = b
        if a < b:
            t1 = 2.0
        t2 = (((t1 + (t0 - b)) + (-0.25)) - t1)
        acc2 = t2
        for j in range(i % 4, 4):
            acc2 = acc2 + t2
        pto.store(o + i, acc2)
