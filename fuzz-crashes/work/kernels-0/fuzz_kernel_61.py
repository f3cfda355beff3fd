import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = 0.25
        t1 = b
        t2 = pto.select((((t0 - 1.5) * pto.select(t1 == a, t1, a)) - (-(-t1))) != (-t1), (((t0 - 1.5) * pto.select(t1 == a, t1, a)) - (-(-t1))), (-t1))
        t99 = a + 1.5j
        pto.store(o + i, t2)
