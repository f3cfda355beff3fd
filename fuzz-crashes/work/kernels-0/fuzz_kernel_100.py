import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = ((-a) * (-((-3.0 - a) * a)))
        t1 = -3.0
        t2 = t1
        if t1 >= t0:
            t2 = pto.select(((a + t1) + (-b)) > (((a - t0) + (b + t1)) - t1), ((a + t1) + (-b)), (((a - t0) + (b + t1)) - t1))
        t3 = b
        if b >= t1:
            t3 = pto.select((t0 * ((-0.25) - 1.5)) > (--3.0), (t0 * ((-0.25) - 1.5)), (--3.0))
        t4 = (a * pto.select(0.25 >= (-pto.select(t3 < t3, t3, t3)), 0.25, (-pto.select(t3 < t3, t3, t3))))
        acc = a
        for j in range(3):
            acc = acc + t4
        pto.store(o + i, acc)
