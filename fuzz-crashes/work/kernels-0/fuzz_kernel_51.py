import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (0.25 + (-pto.select(a >= (a + 0.25), a, (a + 0.25))))
        t1 = (((-(-t0)) - -3.0) - (((--3.0) - (-1.5)) * t0))
        t2 = t1
        if t1 < t0:
            t2 = b
        t3 = b
        if a >= t2:
            t3 = t0
        t4 = b
        if t2 < a:
            t4 = (-1.5)
        t5 = t4
        acc = a
        for j in range(3):
            acc = acc + t5
        pto.store(o + i, acc)
