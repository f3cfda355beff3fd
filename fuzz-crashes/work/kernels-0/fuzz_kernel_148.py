import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = a
        t1 = (3 * (-b))
        t2 = t1
        t3 = (-(-((-7 - 100) - (t0 - t2))))
        t4 = t1
        if b < t0:
            t4 = ((-(-(t1 | a))) ^ a)
        t99 = a @ b
        pto.store(o + i, t4)
