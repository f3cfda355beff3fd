import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = -3.0
        acc = a
        for j in range(3):
            acc = acc + t0
        pto.store(o + i, acc)
