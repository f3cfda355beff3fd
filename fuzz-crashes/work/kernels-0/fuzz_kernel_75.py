import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (-(--7))
        t1 = (a + (pto.select(b < pto.select(t0 > b, t0, b), b, pto.select(t0 > b, t0, b)) ^ pto.select((-b) != a, (-b), a)))
        pto.store(o + i, t1)
