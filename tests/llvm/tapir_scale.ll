declare i1 @llvm.directive.marker()

define void @scale(ptr %x, i32 %n, i32 %a) {
pfor.detach.lr.ph:
  %wide.trip.count = zext i32 %n to i64
  br label %pfor.detach

pfor.detach:
  %indvars.iv = phi i64 [ 0, %pfor.detach.lr.ph ], [ %indvars.iv.next, %pfor.inc ]
  %c = call i1 @llvm.directive.marker()["detach_task"()]
  br i1 %c, label %pfor.body, label %pfor.inc

pfor.body:
  %arrayidx = getelementptr inbounds i32, ptr %x, i64 %indvars.iv
  %0 = load i32, ptr %arrayidx, align 4
  %mul3 = mul nsw i32 %0, %a
  store i32 %mul3, ptr %arrayidx, align 4
  %r = call i1 @llvm.directive.marker()["reattach_task"()]
  br label %pfor.inc

pfor.inc:
  %indvars.iv.next = add nuw nsw i64 %indvars.iv, 1
  %exitcond = icmp eq i64 %indvars.iv.next, %wide.trip.count
  br i1 %exitcond, label %pfor.cond.cleanup, label %pfor.detach

pfor.cond.cleanup:
  %b = call i1 @llvm.directive.marker()["local_barrier"()]
  ret void
}
