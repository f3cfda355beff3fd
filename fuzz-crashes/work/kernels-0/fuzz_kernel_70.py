import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = 100
        t1 = (((1 + (-b)) & 100) * ((a * (a ^ b)) - ((-b) | (b | a))))
        t2 = (((-(t0 + 1)) - -7) + (((a * t1) & (a + t1)) ^ pto.select(t1 < (b - b), t1, (b - b))))
        t3 = (((--7) & (-(-7 | a))) | 100)
        t4 = ((-t3) * (((t2 - a) | (t2 + t1)) & ((t0 | a) + (t1 + 3))))
        t5 = (t4 & (b - pto.select(t2 < 100, t2, 100)))
        t99 = a @ b
        pto.store(o + i, t5)
