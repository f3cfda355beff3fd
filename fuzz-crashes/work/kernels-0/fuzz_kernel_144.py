import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = t0
        if t0 >= b:
            t1 = a
        t2 = a
        if a < b:
            t2 = (pto.select((-a) < pto.select(pto.select(1.5 <= t0, 1.5, t0) <= (-b), pto.select(1.5 <= t0, 1.5, t0), (-b)), (-a), pto.select(pto.select(1.5 <= t0, 1.5, t0) <= (-b), pto.select(1.5 <= t0, 1.5, t0), (-b))) * (pto.select((b + 0.25) != (1.5 - t1), (b + 0.25), (1.5 - t1)) + t0))
        acc = a
        for j in range(3):
            acc = acc + t2
        pto.store(o + i, acc)
