import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = b
        t1 = t0
        if a >= b:
            t1 = ((100 + (pto.select(b < -7, b, -7) - (100 + 100))) * (-(a ^ (t0 ^ t0))))
        acc = a
        for j in range(3):
            acc = acc + t1
        pto.store(o + i, acc)
